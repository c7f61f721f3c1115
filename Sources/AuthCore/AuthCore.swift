// AuthCore module.
