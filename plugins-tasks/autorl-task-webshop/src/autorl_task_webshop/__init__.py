"""WebShop-compatible shopping environment and the ``webshop`` task for autorl."""
