"""Mutation tests: plant a realistic bug in a concept's code, see its live checks turn red."""
