"""Runs the example in one process: Django with an in-memory SQLite database, orders
numbered by seqvend at save and labelled with a carrier number.

    SEQVEND_URL=http://127.0.0.1:8080 SEQVEND_TOKEN=<vend token> \
    SEQVEND_SEQUENCE=order-numbers SEQVEND_LABELS=ups-5r8939 python run.py

The sequences must exist (order-numbers plain, ups-5r8939 with a carrier format)."""

import os
import sys

import django
from django.conf import settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
settings.configure(
    INSTALLED_APPS=["orders"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    SEQVEND_URL=os.environ["SEQVEND_URL"],
    SEQVEND_TOKEN=os.environ["SEQVEND_TOKEN"],
)
django.setup()

from django.db import connection  # noqa: E402

from orders.models import Order  # noqa: E402

with connection.schema_editor() as editor:
    editor.create_model(Order)
Order._meta.get_field("number").sequence = os.environ.get("SEQVEND_SEQUENCE", "order-numbers")

orders = [Order.objects.create(customer=f"customer {i}") for i in range(3)]
label = orders[0].buy_label(os.environ.get("SEQVEND_LABELS", "ups-5r8939"))
again = Order.objects.get(pk=orders[0].pk).buy_label(os.environ.get("SEQVEND_LABELS", "ups-5r8939"))
assert label == again, "a retried label request gets the same number"
for order in Order.objects.order_by("number"):
    print(order.number, order.customer, order.tracking_number or "-")
