"""Recipes: the model of one runtime, its loader, its consistency checks and selections."""
