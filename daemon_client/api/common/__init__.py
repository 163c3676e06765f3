"""What the API families share: local handles, the directory namespace of agents and
workspaces, and the feature gates of calls only newer daemons answer."""
