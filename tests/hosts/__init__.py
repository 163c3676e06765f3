"""Host profiles: values, ranking and rounds, failover end to end, serverId checks, threads."""
