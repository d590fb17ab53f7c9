# Intentionally empty: there is no solve here.
