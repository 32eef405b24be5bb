"""What a plugin's commands may use (see overlay.api): standard library
only, as the core's own commands, so a command starts quickly."""

from overlay.cli import common, options
from overlay.cli.options import OptionError
from overlay.cli.views import status_xml, text_element
from overlay.language import limits
from overlay.language.limits import printable, shown
from overlay.language.request import (
                             DEFAULT_ACCOUNT,
                             RequestError,
                             check_length,
                             format_pe_range,
                             parse_alloc_rule,
                             parse_ar_id,
                             parse_attribute_list,
                             parse_int,
                             parse_job_references,
                             parse_name,
                             parse_pe_range,
                             parse_queue_list,
                             parse_yes_no,
                             request_wire,
                             window_end,
)
from overlay.language.timespec import (
                             TIME_FORMS,
                             TimeSpecError,
                             format_ctime,
                             format_iso,
                             format_time,
                             parse_time,
)
from overlay.wire import protocol
from overlay.wire.protocol import EXIT_REFUSED, EXIT_USAGE

__all__ = [
    "limits", "protocol", "common", "options", "OptionError", "status_xml", "text_element",
    "printable", "shown", "EXIT_REFUSED", "EXIT_USAGE", "DEFAULT_ACCOUNT", "RequestError",
    "check_length", "format_pe_range", "parse_alloc_rule", "parse_ar_id", "parse_attribute_list",
    "parse_int", "parse_job_references", "parse_name", "parse_pe_range", "parse_queue_list",
    "parse_yes_no", "request_wire", "window_end", "TIME_FORMS", "TimeSpecError", "format_ctime",
    "format_iso", "format_time", "parse_time",
]
