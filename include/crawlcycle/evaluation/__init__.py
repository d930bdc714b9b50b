"""Not the product: the simulator, its ground truth and second judge, the policy lab."""
