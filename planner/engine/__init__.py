"""fleetcap's pure-Python capacity and cost engine. No Django imports, ever.

Modules: ``formats`` (bits per weight, bytes per element), ``spec`` (model, accelerator,
layout dataclasses and their validation), ``errors`` (field-level input errors), and the
calculators built on them (sizing, throughput, costs, search).
"""
