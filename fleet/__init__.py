"""fleet: the stored records (SKUs, clusters and their history, deployments, models, workloads,
quotes, prices, polls) and the live state of the serving endpoints.

Never imports planner's Django code (an import-linter contract in CI); the project package
``fleet.project`` is the composition root that wires both apps together.
"""
