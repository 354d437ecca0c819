// Configuration: the config file (TOML subset) parser and its typed settings (issue 6).
