#!/bin/sh
# Make docs/images/qt-example.png: the Qt example on Qt's offscreen platform (no screen
# needed), which saves a PNG of its own window 0.5 s before it closes.
#
#   pip install -e ".[demo,qt]"                   # the embedded demo daemon and PySide6
#   sh examples/screenshot_qt.sh                  # from anywhere; PYTHON=... to choose Python
set -eu
cd "$(dirname "$0")/.."
QT_QPA_PLATFORM=offscreen "${PYTHON:-python3}" examples/qt_agents.py --duration 2.1 --screenshot docs/images/qt-example.png
