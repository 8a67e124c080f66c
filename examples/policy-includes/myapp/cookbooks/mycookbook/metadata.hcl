name    = "mycookbook"
version = "1.7.0"
