"""What frameworks say about themselves and the environment an app runs in."""
