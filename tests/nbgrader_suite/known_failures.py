"""nbgrader's autograde tests that `hooklab autograde` fails today, each with what it lacks: in
hooklab mode they are strict xfails (conftest.py), so a test that starts passing fails until
its entry is removed. The evidence, command by command, is in ANALYSIS.md.

ROOT: hooklab grades the course of its package's folder, not the one nbgrader finds from the
working folder's nbgrader_config.py. CWD_CONFIG: hooklab reads no nbgrader_config.py from the
working folder, so the settings a test appends there are lost."""

ROOT = "course root from the working folder's config"
CWD_CONFIG = "settings of the working folder's nbgrader_config.py"
KERNELSPEC = 'a released notebook without kernelspec (gradebook "{}")'
TRAITLETS = "traitlets options on the command line"
SINGLE = "--notebook (grade only matching notebooks, in the existing folder)"

KNOWN_FAILURES: dict[str, str] = {
    "test_help": "--help-all",
    "test_missing_student": f"{TRAITLETS} (--Autograde.create_student); {ROOT}",
    "test_grade": ROOT,
    "test_grade_autotest": ROOT,
    "test_grade_hashed_autotest": ROOT,
    "test_grade_complex_autotest": ROOT,
    "test_showtraceback_exploit": f"{ROOT}; {CWD_CONFIG} (Execute.timeout)",
    "test_student_id_exclude": f"{TRAITLETS} (--CourseDirectory.student_id_exclude); {ROOT}",
    "test_grade_timestamp": ROOT,
    "test_grade_empty_timestamp": ROOT,
    "test_late_submission_penalty_none": ROOT,
    "test_late_submission_penalty_zero": f"{ROOT}; {CWD_CONFIG} (LateSubmissionPlugin)",
    "test_late_submission_penalty_plugin": (
        f"{ROOT}; {CWD_CONFIG} (AssignLatePenalties.plugin_class); the working folder on "
        "sys.path for the plugin"
    ),
    "test_force": ROOT,
    "test_force_f": f"-f; {ROOT}",
    "test_filter_notebook": f"{SINGLE}; {ROOT}",
    "test_grade_overwrite_files": f"{ROOT}; {CWD_CONFIG} (Autograde.exclude_overwriting)",
    "test_grade_overwrite_files_subdirs": f"{ROOT}; {CWD_CONFIG} (exclude_overwriting)",
    "test_side_effects": f"{ROOT}; the kernel's working folder is not the submission's",
    "test_skip_extra_notebooks": ROOT,
    "test_permissions": f"{ROOT}; {KERNELSPEC}; {CWD_CONFIG} (CourseDirectory.groupshared)",
    "test_custom_permissions": f"{TRAITLETS} (--AutogradeApp.permissions); {KERNELSPEC}; {ROOT}",
    "test_force_single_notebook": f"{TRAITLETS} (--ClearMetadataPreprocessor.*); {SINGLE}",
    "test_update_newer": ROOT,
    "test_update_newer_single_notebook": f"{TRAITLETS} (--ClearMetadataPreprocessor.*); {SINGLE}",
    "test_hidden_tests_single_notebook": ROOT,
    "test_hidden_tests_autotest": ROOT,
    "test_handle_failure": f"{ROOT}; {KERNELSPEC}",
    "test_handle_failure_single_notebook": f"{SINGLE} (a failure keeps the folder); {KERNELSPEC}",
    "test_missing_source_kernelspec": f"{ROOT}; {KERNELSPEC}",
    "test_incorrect_submitted_kernelspec": ROOT,
    "test_no_execute": f"--no-execute (Execute.enabled=False is ignored); {ROOT}",
    "test_infinite_loop": f"{ROOT}; {CWD_CONFIG} (Execute.timeout)",
    "test_missing_files": f"{ROOT}; {KERNELSPEC}; a submission folder with no notebook fails",
    "test_grade_missing_notebook": ROOT,
    "test_grade_with_validating_envvar": ROOT,
    "test_autograde_timeout": f"{TRAITLETS} (--Execute.timeout); {ROOT}",
}
