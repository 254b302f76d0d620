"""Pages of the planner, one module per page family."""
