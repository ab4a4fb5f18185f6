# Put before a guide's blocks by GuideRun: strict mode, the curl wrapper and the reporters.
set -Eeuo pipefail
__dk_hdr=/dev/null
# Every curl records its response headers where the next status check looks ($__dk_hdr).
curl() { command curl -D "$__dk_hdr" "$@" || return $?; }
__dk_failed() {
  # The wrapper's own failure is reported again where the guide called curl.
  [ "${FUNCNAME[1]:-main}" != curl ] || return 0
  printf 'command\t%s\t%s\t%s\t%s\n' "$1" "$2" "$BASH_SUBSHELL" "$3" >>"$DK_REPORT"
}
__dk_status() {
  local got
  got=$(awk '/^HTTP\//{s=$2} END{print s}' "$__dk_hdr")
  __dk_hdr=/dev/null
  [ -n "$got" ] || got="no response"
  if [ "$got" != "$1" ]; then
    printf 'status\t%s\t%s\t%s\n' "$1" "$2" "$got" >>"$DK_REPORT"
    exit 97
  fi
}
trap '__dk_failed $? $LINENO "$BASH_COMMAND"' ERR
