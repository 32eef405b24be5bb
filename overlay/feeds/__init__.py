"""Calendar feeds: each user's ARs and a queue's ARs as iCalendar (RFC 5545)
that a mail client subscribes to by URL, with a feed token per user."""
