"""What a request costs each kind of completion service, and what cancelling it saves.

The completion pipeline decides whether to cancel a request in flight, wait
for it, or let it finish by what the service does when the client goes away
(measured against the real servers; see the README's "Slow servers"):

============ ================================ ====================================
service      the client closes during the     the client closes while it generates
             prompt (before the first token)
============ ================================ ====================================
llama.cpp    nothing saved: ``llama-server``   generation stops at the next token;
             reads the whole prompt, then      the prompt's KV cache is kept, so a
             notices the closed connection     next prompt with the same start is
                                               cheap
Ollama       nothing saved: its runner is      generation stops
             llama.cpp's, the prompt batch
             runs to its end
vLLM, hosted the request is aborted at once    generation stops
OpenAI-      (vLLM aborts on disconnect; an
compatible   HTTP/2 ``RST_STREAM`` ends the
             stream)
============ ================================ ====================================

Local servers (llama.cpp, Ollama) also have few slots, often one: a second
request waits behind the first, so sending one before the first has finished
only queues it. ``ServiceCost`` carries the two facts the pipeline needs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServiceCost:
    """How a service spends its time on a request the client gives up."""

    #: closing the request before its first token stops the prompt's evaluation
    cancel_saves_prompt: bool
    #: requests beyond the one running wait in the service's queue (few slots)
    queues_requests: bool

    @classmethod
    def for_kind(cls, kind: str) -> ServiceCost:
        """The cost model of a service kind: ``llamacpp``, ``ollama``, anything else."""
        if kind in ("llamacpp", "ollama"):
            return LOCAL_SERVER
        return REMOTE_SERVICE


#: llama.cpp and Ollama: a prompt once sent is evaluated to its end
LOCAL_SERVER = ServiceCost(cancel_saves_prompt=False, queues_requests=True)
#: vLLM and hosted OpenAI-compatible APIs: a cancelled request stops at once
REMOTE_SERVICE = ServiceCost(cancel_saves_prompt=True, queues_requests=False)
