"""Not the product: the embedded local launcher (simulated hosts on one machine), the synthetic trainer and the
demo, which let hotspare be tried and tested without a cluster."""
