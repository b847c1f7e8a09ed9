"""One appending client for the crash test: records what the daemon acknowledged.

Usage: crash_client.py URL CLIENT_ID SESSION_IDS(comma) ACK_FILE STOP_FILE SEED
Each event carries x_client and x_n (this client's counter). Requests with an
idempotency key are retried until acknowledged; the others are given up on failure.
"""

from __future__ import annotations

import os
import random
import sys
import time

import httpx


def main() -> None:
    url, client_id, sessions, ack_path, stop_path, seed = sys.argv[1:7]
    rng = random.Random(int(seed))
    session_ids = sessions.split(",")
    n = 0
    with open(ack_path, "a", buffering=1) as acks, httpx.Client(base_url=url, timeout=5) as http:
        while not os.path.exists(stop_path):
            sid = rng.choice(session_ids)
            size = rng.choice([1, 1, 1, 3, 8])
            events = []
            for _ in range(size):
                n += 1
                events.append(
                    {
                        "type": "message",
                        "role": "user",
                        "content": "x" * int(64 * 2 ** rng.uniform(0, 12)),  # 64 B-256 KiB
                        "x_client": client_id,
                        "x_n": n,
                    }
                )
            keyed = rng.random() < 0.5
            headers = {"Idempotency-Key": f"{client_id}-{n}"} if keyed else {}
            body = events[0] if size == 1 and rng.random() < 0.5 else events
            while True:
                try:
                    r = http.post(f"/v1/sessions/{sid}/events", json=body, headers=headers)
                except httpx.HTTPError:
                    r = None
                if r is not None and r.status_code in (200, 201):
                    result = r.json()
                    for i, event in enumerate(events):
                        acks.write(f"{sid} {event['x_n']} {result['first_seq'] + i}\n")
                    break
                if r is not None and r.status_code < 500:
                    raise SystemExit(f"unexpected {r.status_code}: {r.text}")
                if not keyed or os.path.exists(stop_path):
                    break
                time.sleep(0.02)


if __name__ == "__main__":
    main()
