pytest_plugins = ["mqwire.testing.pytest_plugin", "mqwire.testing.cluster_fixtures"]
