"""task=gymnasium: any registered Gymnasium env through the env contract."""
