// AuthGateTesting module.
