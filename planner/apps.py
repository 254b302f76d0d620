from django.apps import AppConfig


class PlannerConfig(AppConfig):
    name = "planner"
    verbose_name = "Capacity and cost planning"

    def ready(self) -> None:
        from fleet import audit
        from planner import answers
        from planner.models import Budget, Calibration, Decision

        # The audit trail (fleet/audit.py). Both are written once and never edited: the entry says
        # who and when; their frozen figures, inputs and parsed logs stay on the records themselves.
        audit.register(Decision, exclude=["figures", "inputs"])
        audit.register(Calibration, exclude=["parsed", "prediction", "figures", "log_text"])
        # A budget's signing secret: the entry says it changed, never any of it.
        audit.register(Budget, secrets=["webhook_secret_encrypted"])
        # Stored answers (capacity snapshots, breakevens, decision reviews) follow the records they rest on.
        answers.connect()
