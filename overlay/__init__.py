"""The PluS reservation overlay: core package (backend-agnostic)."""
