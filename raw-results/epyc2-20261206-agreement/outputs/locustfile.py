from locust import FastHttpUser, constant, task

BODY = b"x" * 1024


class Echo(FastHttpUser):
    wait_time = constant(0)

    @task
    def echo(self):
        self.client.post("/echo", data=BODY, headers={"Content-Type": "application/octet-stream"})
