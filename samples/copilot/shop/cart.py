"""Shopping cart totals for the checkout page."""

PRICES_CENTS = {"apple": 120, "bread": 250, "coffee": 899}
DISCOUNTS = {"WELCOME10": 10, "VIP25": 25}


def cart_total(items, code=None):
    """Sum of item prices in cents; `code` is a discount code (percent off)."""
    total = sum(PRICES_CENTS[name] * qty for name, qty in items)
    percent = DISCOUNTS.get(code, 0) if code else 0
    return total * (100 - percent) // 100
