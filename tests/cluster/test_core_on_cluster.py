"""The core end-to-end cases, run again on a 3-master cluster.

The test functions are tests/core's own; the ``harness`` fixture of tests/cluster/conftest.py
puts them on the cluster (RedisCluster clients, FastStream's cluster broker, outbox + relay).
"""

from __future__ import annotations

import pytest

from tests.core.test_action_semantics import (  # noqa: F401
    test_blocking_hands_off_by_default,
    test_continue_writes_empty_output_and_the_error_variable,
    test_result_echoes_command_and_action_ids,
    test_results_go_to_the_reply_stream_the_command_names,
)
from tests.core.test_blocks import (  # noqa: F401
    test_call_tool_runs_a_child_with_the_parent_variables_and_its_inputs,
    test_child_writes_do_not_leak_into_the_parent,
    test_conditions_route_between_blocks,
    test_execute_script_gets_inputs_and_writes_its_output,
    test_http_call_reads_a_json_body_by_path,
    test_http_error_with_blocking_fails_the_tool,
    test_return_block_interpolates_inputs_and_session_variables,
    test_script_errors_follow_on_error_continue,
)
from tests.core.test_debug_events import (  # noqa: F401
    test_a_per_contact_flag_turns_debug_on_for_every_command,
    test_debug_events_come_in_order_with_nested_depth,
    test_every_tool_run_emits_an_execution_event,
    test_final_debug_event_carries_the_error,
)
from tests.core.test_error_table import (  # noqa: F401
    test_blocking_block_failure_propagates_to_the_action,
    test_depth_beyond_five_fails,
    test_invalid_definition_json,
    test_tool_cycle_is_detected,
    test_tool_not_found,
)
from tests.core.test_idempotency_and_bad_input import (  # noqa: F401
    test_a_command_missing_fields_gets_an_error_result_naming_the_field,
    test_a_command_published_twice_runs_once,
    test_a_command_that_is_not_json_with_no_command_id_is_dead_lettered,
    test_a_repeated_command_id_is_not_executed_again_later,
    test_invalid_utf8_is_dead_lettered_and_the_worker_goes_on,
)
from tests.edge.test_circuit import (  # noqa: F401
    test_a_down_server_opens_its_circuit_and_a_probe_after_the_cooldown_closes_it,
)
from tests.edge.test_limits import test_a_call_that_waited_for_its_turn_is_counted  # noqa: F401
from tests.edge.test_retries import (  # noqa: F401
    test_a_429_with_retry_after_one_second_waits_at_least_that_long,
    test_a_503_then_a_200_is_answered_ok_in_two_requests,
    test_the_block_s_debug_event_lists_every_attempt,
)

# The slow tier: a three-node Valkey cluster (python -m pytest -m slow).
pytestmark = pytest.mark.slow
