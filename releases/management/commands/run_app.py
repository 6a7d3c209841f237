"""Start the web server and a real Celery worker together; Ctrl-C stops both."""

import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the web server and a Celery worker as two processes until interrupted."

    def add_arguments(self, parser):
        parser.add_argument("--addrport", default="127.0.0.1:8000")

    def handle(self, *args, addrport, **options):
        python = sys.executable
        processes = [
            subprocess.Popen(
                [
                    python,
                    "-m",
                    "celery",
                    "-A",
                    "config",
                    "worker",
                    "--loglevel=INFO",
                    "--concurrency=1",
                    "--pool=solo",
                ]
            ),
            subprocess.Popen([python, "manage.py", "runserver", "--noreload", addrport]),
        ]
        self.stdout.write(f"Web server on http://{addrport}/ and a Celery worker are starting.")
        try:
            while all(p.poll() is None for p in processes):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            for process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
        codes = [p.returncode for p in processes]
        if any(code not in (0, -signal.SIGTERM, -signal.SIGINT) for code in codes):
            os._exit(1)
