"""The client's own threads and tables, with no domain knowledge: the connection and its
reader loop, requests, push routing, callback dispatch, timers and the heartbeat."""
