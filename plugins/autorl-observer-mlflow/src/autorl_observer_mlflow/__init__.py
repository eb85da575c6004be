"""autorl observer: each run logged as an MLflow run (opt-in: AUTORL_MLFLOW_TRACKING_URI)."""
