"""Placeholder registered later."""
