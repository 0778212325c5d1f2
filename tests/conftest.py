pytest_plugins = ["mqwire.testing.pytest_plugin"]
