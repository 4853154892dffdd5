// The HTTP client the CLI uses to reach the daemon.
