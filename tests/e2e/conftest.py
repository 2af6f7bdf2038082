"""Fixtures for the server end-to-end tests (helpers in memra_server.py): one
memra-server for the session, an openai client on it, and a logit_bias that
bans the model's end-of-generation tokens."""
import openai
import pytest

from memra_server import ALIAS, Server


@pytest.fixture(scope="session")
def server():
    s = Server("--slots", "16", "--ctx", "512")
    yield s
    rc = s.stop()
    assert rc == 0, f"memra-server exited with {rc}:\n{s.log}"


@pytest.fixture(scope="session")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=300)


@pytest.fixture(scope="session")
def eog_bias(server):
    """logit_bias that bans the model's end-of-generation tokens, so a request
    runs to max_tokens."""
    status, _, data = server.request("POST", "/tokenize",
                                     {"prompt": "<|endoftext|><|im_end|>", "add_special_tokens": False})
    assert status == 200, data
    return {str(t): -100 for t in data["tokens"]}
