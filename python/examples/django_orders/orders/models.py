from django.db import models

from .seqvend_ids import SequenceField, client


class Order(models.Model):
    number = SequenceField(sequence="order-numbers")
    customer = models.CharField(max_length=100)
    tracking_number = models.CharField(max_length=64, blank=True)

    def buy_label(self, carrier_sequence: str) -> str:
        """A carrier number for this order's parcel: a strict vend, keyed by the order, so
        a retried request (a timeout, a double click) gets the same number, never a second."""
        vended = client().vend(carrier_sequence, idempotency_key=f"order-{self.number}-label")
        self.tracking_number = vended.formatted[0] if vended.formatted else str(vended.values[0])
        self.save(update_fields=["tracking_number"])
        return self.tracking_number
