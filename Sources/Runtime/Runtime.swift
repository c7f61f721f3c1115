// Runtime module.
