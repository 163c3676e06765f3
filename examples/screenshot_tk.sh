#!/bin/sh
# Make docs/images/tk-example.png: the Tk example on a virtual X screen (Xvfb, no window
# manager), captured by the example itself with ImageMagick's `import` 0.5 s before it closes.
#
#   apt-get install -y xvfb imagemagick          # once (Debian/Ubuntu)
#   pip install -e ".[demo]"                      # the embedded demo daemon
#   sh examples/screenshot_tk.sh                  # from anywhere; PYTHON=... to choose Python
set -eu
cd "$(dirname "$0")/.."
DISPLAY_NUMBER="${DISPLAY_NUMBER:-99}"
Xvfb ":$DISPLAY_NUMBER" -screen 0 1024x768x24 -nolisten tcp &
XVFB_PID=$!
trap 'kill "$XVFB_PID"' EXIT
sleep 1
DISPLAY=":$DISPLAY_NUMBER" "${PYTHON:-python3}" examples/tk_agents.py --duration 2.7 --screenshot docs/images/tk-example.png
