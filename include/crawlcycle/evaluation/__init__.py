"""Not the product: the simulator, its ground truth and panel of judges, the policy lab."""
