"""A task defined outside the package: a folder and one ``register_task`` line."""
