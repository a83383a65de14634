"""The experiment config: pydantic models (schema) and the YAML loader with limits, ${VAR} and located
errors. In: a YAML file. Out: a frozen ExperimentConfig.
"""
