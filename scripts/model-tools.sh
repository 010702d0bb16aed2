# scripts/model-tools.sh — sourced by the model checks (check-*-model.sh): what they
# all need before they start. Defines cc (the C compiler: $CC, or cc) and exits 2 when
# spin or the compiler is missing.
#   require_model_tools NAME   NAME: the calling script, for the message
require_model_tools() {
    cc=${CC:-cc}
    local tool
    for tool in spin "$cc"; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "$1: '$tool' not found (SPIN: apt-get install spin)" >&2
            exit 2
        fi
    done
}
