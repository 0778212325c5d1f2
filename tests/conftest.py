pytest_plugins = ["brokers.pytest_plugin"]
