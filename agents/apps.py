from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"

    def ready(self) -> None:
        # Memory asks a summariser for room summaries and dated memory (D33); every process that
        # loads this app (the server, the management commands, the tests) gets the CLI one.
        from agents import cli_summariser

        cli_summariser.register()
