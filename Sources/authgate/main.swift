print("authgate")
