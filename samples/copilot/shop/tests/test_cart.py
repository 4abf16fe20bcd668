import unittest

from cart import total_cents


class TotalTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(total_cents([("apple", 2), ("bread", 1)]), 490)

    def test_welcome_code(self):
        self.assertEqual(total_cents([("coffee", 1)], code="WELCOME10"), 809)

    def test_unknown_code(self):
        self.assertEqual(total_cents([("bread", 2)], code="NOPE"), 500)


if __name__ == "__main__":
    unittest.main()
