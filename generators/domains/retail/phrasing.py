"""How a retail support agent names its actions and the customer's things (see
generators/phrasing.py): orders by id, payment methods as the customer knows them ("your Visa
card ending in 4421"), items by product and options, addresses as one line, refunds with their
amount and where they go. Each confirmation still states the order id and street line the
policy rules read, and each report a value the write changed (status, address, amount)."""

from __future__ import annotations

from trajforge.generators.phrasing import ActionPhrase, Phrasing, Reference

_PAYMENT = Reference(
    id_field="id",
    kind_field="source",
    phrases={
        "credit_card": "your {brand} card ending in {last_four}",
        "gift_card": "your gift card",
        "paypal": "your PayPal account",
        "*": "your saved payment method",
    },
)
_ITEM = Reference(id_field="item_id", phrases={"*": "the {name} ({options})"})
_VARIANT = Reference(id_field="item_id", phrases={"*": "the {options} version"})

RETAIL_PHRASING = Phrasing(
    actions={
        "cancel_pending_order": ActionPhrase(
            confirm="cancel order {order_id} (reason: {reason})",
            done="cancelled order {order_id}, so its status is now {status}",
        ),
        "modify_pending_order_items": ActionPhrase(
            confirm="change {item_ids} in order {order_id} to {new_item_ids}, settling the "
            "price difference with {payment_method_id}",
            done="updated the items in order {order_id}: {item_ids} became {new_item_ids}",
        ),
        "modify_pending_order_address": ActionPhrase(
            confirm="ship order {order_id} to {address} instead",
            done="changed the shipping address of order {order_id} to {address}",
        ),
        "modify_pending_order_payment": ActionPhrase(
            confirm="pay for order {order_id} with {payment_method_id} instead, refunding the "
            "original payment",
            done="switched the payment for order {order_id} to {payment_method_id}",
        ),
        "modify_user_address": ActionPhrase(
            confirm="update your default address to {address}",
            done="updated your default address to {address}",
        ),
        "return_delivered_order_items": ActionPhrase(
            confirm="start a return of {item_ids} from order {order_id}, with the refund going "
            "to {payment_method_id}",
            done="started the return of {item_ids} from order {order_id}, so its status is "
            "now {status}",
        ),
        "exchange_delivered_order_items": ActionPhrase(
            confirm="exchange {item_ids} from order {order_id} for {new_item_ids}, settling "
            "the price difference with {payment_method_id}",
            done="set up the exchange of {item_ids} from order {order_id} for "
            "{new_item_ids}, so its status is now {status}",
        ),
    },
    references={
        "payment_method_id": _PAYMENT,
        "return_payment_method_id": _PAYMENT,
        "exchange_payment_method_id": _PAYMENT,
        "item_ids": _ITEM,
        "new_item_ids": _VARIANT,
    },
    answers={
        "amount": (
            "For {subject}, there is a {transaction_type} of ${value} on {payment_method_id}.",
            "You'll see a {transaction_type} of ${value} on {payment_method_id} for {subject}.",
            "The {transaction_type} for {subject} comes to ${value}, on {payment_method_id}.",
        ),
        "refund_amount": (
            "The refund of ${value} for {subject} will go to {return_payment_method_id}.",
            "You'll get a refund of ${value} on {return_payment_method_id} once the items "
            "of {subject} are back.",
            "Your refund for {subject} is ${value}, back to {return_payment_method_id}.",
            "The refund of ${value} for {subject} goes back to the original payment method.",
            "You'll get ${value} back for {subject} on the payment method you used.",
            "The ${value} you paid for {subject} will be refunded to how you paid.",
            "For {subject}, ${value} is on its way back to your original payment method.",
        ),
        "exchange_price_difference": (
            "The price difference for {subject} is ${value}, settled with "
            "{exchange_payment_method_id}.",
            "For {subject}, the difference in price comes to ${value}, on "
            "{exchange_payment_method_id}.",
        ),
        "tracking_id": (
            "The tracking number for {subject} is {value}.",
            "You can follow {subject} with tracking number {value}.",
            "{subject} ships under tracking number {value}.",
        ),
        "status": (
            "{subject} is currently {value}.",
            "Right now, {subject} is {value}.",
            "I checked {subject}, and it is {value}.",
        ),
    },
)
