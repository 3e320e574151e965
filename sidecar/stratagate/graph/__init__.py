"""Knowledge graph: nodes, typed edges and facts with validity windows, projected from events."""
