/**
 * `g`, the git of every remote script (ssh/remote-scripts.ts and ssh/cleanup-scripts.ts): the same hardening as the host's
 * git (domain/git-hardening.ts), built from the same tables. A clone on a target is the
 * agent's to write, so each call first lists the drivers its config files define (`git config`
 * only reads files) and empties every one of them, as git/git.ts does on the host. Needs git 2.31
 * or newer on the target (GIT_CONFIG_COUNT).
 */
import {
  NAMED_SECTION_SETTINGS,
  GIT_HARDENING_CONFIG,
  GIT_HARDENING_ENVIRONMENT,
  KEPT_PROTOCOL,
} from '../domain/git-hardening';

const shellWord = (text: string): string => {
  // The transport forbids single quotes, and these are the service's own constants.
  if (!/^[A-Za-z0-9_./:=@-]*$/.test(text)) throw new Error(`not a plain shell word: ${text}`);
  return `"${text}"`;
};

const fixedVariables = [
  ...Object.entries(GIT_HARDENING_ENVIRONMENT).map(([name, value]) => `${name}=${value}`),
  ...GIT_HARDENING_CONFIG.flatMap(([key, value], i) => [
    `GIT_CONFIG_KEY_${i}=${key}`,
    `GIT_CONFIG_VALUE_${i}=${value}`,
  ]),
];

const driverCases = Object.entries(NAMED_SECTION_SETTINGS)
  .map(
    ([kind, keys]) =>
      `      ${kind}) for key in ${keys.map(([key, value]) => shellWord(`${key}=${value}`)).join(' ')}; do vars+=("GIT_CONFIG_KEY_$n=${kind}.$sub.\${key%%=*}" "GIT_CONFIG_VALUE_$n=\${key#*=}"); n=$((n + 1)); done ;;`,
  )
  .join('\n');

export const REMOTE_GIT_FUNCTION = `g() {
  local dir=. name kind rest sub key n=${GIT_HARDENING_CONFIG.length}
  local -A seen=()
  if [ "\${1:-}" = -C ]; then dir=$2; fi
  local -a vars=(${fixedVariables.map(shellWord).join(' ')})
  while IFS= read -r -d "" name; do
    kind=\${name%%.*}; rest=\${name#*.}
    case "$rest" in *.*) sub=\${rest%.*} ;; *) continue ;; esac
    [ "$kind.$sub" != protocol.${KEPT_PROTOCOL} ] || continue
    [ -z "\${seen[$kind.$sub]:-}" ] || continue
    seen[$kind.$sub]=1
    case "$kind" in
${driverCases}
    esac
  done < <(env "\${vars[@]}" GIT_CONFIG_COUNT=$n git -C "$dir" config -z --name-only --get-regexp "^(${Object.keys(NAMED_SECTION_SETTINGS).join('|')})[.]" 2>/dev/null)
  env "\${vars[@]}" GIT_CONFIG_COUNT=$n git "$@"
}`;
