"""The reference catalogue: SKUs, models, GPU quotes and API prices as JSON (see README.md).

``reference`` reads the SKU and model files without Django; ``fleet.catalog_loader`` loads all four
into the database.
"""
