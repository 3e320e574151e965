"""Secret redaction leaves ordinary code and logs byte-identical: a fixed sample of real source nobody here wrote
(the Python standard library of this machine, playwright-core's JS and TypeScript, other languages as the machine's
packages install them: C, Perl, shell, Java, SQL, configuration, package logs) and realistic log lines must come back
from ``redact_text`` unchanged; so must the shapes of code the benchmark's larger corpus (Go, Rust, Java, C, the
pinned DSH's packages) showed being taken for secrets. The recall side is tests/test_secrets.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from stratagate.safety.secrets import redact_text
from support.precision_sample import (
    LOG_LINES,
    REQUIRED_LANGUAGES,
    assert_left_alone,
    changed_lines,
    other_sample,
    playwright_sample,
    read,
    stdlib_sample,
)


def test_the_sample_is_real_and_large() -> None:
    files = stdlib_sample()
    assert len(files) >= 40
    assert sum(p.stat().st_size for p in files) >= 1_000_000


def _ids(paths: list[Path]) -> list[str]:
    return [p.name if p.parent.name in ("lib", "python3.11") else f"{p.parent.name}/{p.name}" for p in paths]


# The sample's only credentials: a literal password in a docstring's example (rightly replaced; nothing else is).
KNOWN_LITERALS = {"request.py": ["geheim$parole"]}


@pytest.mark.parametrize("path", stdlib_sample() + playwright_sample(),
                         ids=_ids(stdlib_sample() + playwright_sample()))
def test_real_source_is_left_byte_identical(path: Path) -> None:
    text = read(path)
    assert text is not None, f"{path} is not UTF-8 text"
    assert_left_alone(str(path), text, KNOWN_LITERALS.get(path.name, []))


def test_log_lines_are_left_byte_identical() -> None:
    out = redact_text(LOG_LINES)
    assert out == LOG_LINES, "redaction altered\n" + "\n".join(changed_lines(LOG_LINES, out))
    for line in LOG_LINES.splitlines():  # alone too: a shorter text is scanned as one window
        assert redact_text(line) == line


OTHER = other_sample()


def test_other_languages_are_sampled() -> None:
    languages = {lang for lang, _, _ in OTHER}
    assert REQUIRED_LANGUAGES <= languages, f"missing: {REQUIRED_LANGUAGES - languages}"
    assert sum(len(text) for _, _, text in OTHER) >= 1_000_000


@pytest.mark.parametrize(("lang", "name", "text"), OTHER, ids=[f"{lang}:{name.rsplit('/', 1)[-1]}" for lang, name, _ in
                                                               OTHER])
def test_other_languages_are_left_byte_identical(lang: str, name: str, text: str) -> None:
    out = redact_text(text)
    assert out == text, f"{name}: redaction altered\n" + "\n".join(changed_lines(text, out))


# Shapes of code the benchmark's corpus showed being taken for secrets, one line each (written here in the same
# shape, not copied): every one must come back unchanged.
CODE_SHAPES = {
    "rust": [
        "Some(Ok(Token::Ident(false, name))) => {", "let token = Secret::from(buffer);",
        "pub token: Option<Secret<String>>,", "fn check(&mut self, token: &Token<'a>) -> bool {",
        "pub fn find_manifest(pwd: &Path) -> Result<PathBuf> {", "use crate::util::credential::adaptor::Basic;",
        "let token = cargo_credential::read_token(options, registry)?;",
        "secret_key = Secret::default().map(|mut key| {",
    ],
    "go": [
        "token = &Token{", "token = oauth2.Token{", "TokenURL: \"https://login.example.com/oauth2/token\",",
        "TokenType: \"urn:ietf:params:oauth:token-type:saml2\",", "sessionTokenUrl:    sessionTokenUrl,",
        "awsSecretAccessKey = \"AWS_SECRET_ACCESS_KEY\"", "serviceAccountKey = \"service_account\"",
        "tokenPath := \"/computeMetadata/v1/instance/token\"",
        "func TestAuthSwitchCachingSHA256PasswordEmpty(t *testing.T) {",
        "sessionTokenHeader = \"X-aws-ec2-metadata-token\"",
        "return fmt.Errorf(\"oauth2: cannot fetch token: %v\\nResponse: %s\", status, body)",
    ],
    "c": [
        "const char *token = curlx_str(&out);", "const char *passwd = data->state.creds ? data->creds->passwd : NULL;",
        "*passwdp = pbuf;", "sshc->priv_key = curlx_strdup(", "*userpwd = curlx_dyn_ptr(&dyn);",
        "infof(data, \"login='%s', passwd='%s'\", login, passwd);",
        " * http_output_basic() sets up an Authorization: header",
        " * ftp://user:password@ftp.example.com:8021/README",
    ],
    "java": [
        "String[] tokens = StringUtils.commaDelimitedListToStringArray(value);",
        "String serverSecret = computeServerSecretApplicableAt(creationTime);",
        "public static final String CLIENT_SECRET = \"client_secret\";",
        "private static final String ATT_PASSWORD = \"password-attribute\";",
        "public static final String OPAQUE_TOKEN = \"opaque-token\";",
        "accessTokenHash = computeSHA256(this.accessToken.getTokenValue());",
        " * <h2>Password Encoding</h2>", "SecretKey secret = isValidation ?", "privateKey = priv;",
        "throw new IllegalArgumentException(\"password cannot be more than 72 bytes\");",
        " * @param encoded true if the password argument is already encoded",
        " * If the key file begins with \"-----BEGIN RSA PRIVATE KEY-----\", then it is read as PKCS#1",
    ],
    "typescript": [
        "progressToken: z.ZodOptional<z.ZodUnion<readonly [z.ZodString, z.ZodNumber]>>;",
        "export declare const GLOBAL_API_KEY: unique symbol;", "credentials: Array<AuthConfiguration>;",
        "const credentialsWithoutSessionToken = getCredentialsWithoutSessionToken(credentials);",
        "webSearchApiKeySet: \"A key is configured.\",", "apiKey: \"API key\",", "readonly PASSWORD: \"PASSWORD\";",
        "exports.getBearerTokenEnvKey = getBearerTokenEnvKey;", "client_secret: REDACT,",
        "tokenIds: allTokenIds.map((id) => id.toString()),", "const SOCKS5_NO_ACCEPTABLE_AUTH = 0xff;",
        "const VALID_KEY = `[a-z]${VALID_KEY_CHAR_RANGE}{0,255}`;", "secrets: z$1.array(viewSchema),",
        "const clientSecretExpiresAt = isPublicClient ? undefined : secretExpiryTime;",
        "const apiKeyEnv = provider === \"anthropic\" ? keys[0] : keys[1];",
        "// credentials: neither can be re-created by registering again.",
        "throw new Error(\"create an ephemeral session token:\\nhttps://platform.example.com/docs/realtime\");",
        "\"If you used %s={condition && value}, pass %s={condition ? value : undefined} instead.\"",
        "logger.debug(\"credential-provider-ini - credential_source is Ec2InstanceMetadata\");",
        "handler(e){var{parser:t,funcName:n,token:r}=e,a=null;switch(n){case 1:break}}",
        "return Array.isArray(s)?{tokens:s}:{token:s}}if(a===\"(\"){return{token:r}}});var wl=[]",
        " * @example arn:aws:secretsmanager:us-east-1:123456789012:secret:SecretName-6RandomCharacters",
        " * Credential type, should always be 'external_account'.",
        "export declare function oAuth2TokenAuthToJSON(oAuth2TokenAuth: OAuth2TokenAuth): string;",
    ],
    "perl and shell": [
        "$password = prompt(\"Password:\");", "my $Token = qr/[\\x21\\x23-\\x27]/;",
        "*META_KEY = \\&Test2::Util::ExternalMeta::META_KEY;",
        "Authenticate with the server as C<$user> with password C<$pass>.",
        "GHD=${HOME:-$(getent passwd \"$(id -u)\" | cut -f6 -d:)}",
        "(-[0123456789EFGHIKLPRTUVZabchilnoqrsuvwxyz]*[!0123456789]*)",
    ],
    "c# and c": [
        "cancellationToken: CancellationToken.None).GetAwaiter().GetResult();",
        "return await SendAsync(message, cancellationToken: cancellationToken).ConfigureAwait(false);",
        "\"GitHub.Services.Common, Version=14.0.0.0, Culture=neutral, PublicKeyToken=b03f5f7f11d50a3a\")]",
        "private const string c_passwordToken = \"Password=\";",
        "private const string c_authBearerToken = \"Bearer \";",
        "POLICY_CREATE_SECRET = 0x00000020L,", "throw new ParseException(kind, token: @operator, expression: expr);",
        "/* Password hashes can only be characters that represent hexadecimal values */",
        " * is no password set, nor a specific interface is bound, we don't accept",
    ],
    "kotlin": [
        "append(\"-----BEGIN PRIVATE KEY-----\\n\")\nencodeBase64Lines(keyPair.private.encoded.toByteString())\n"
        "append(\"-----END PRIVATE KEY-----\\n\")",
        " * The easiest way to pin a host is turn on pinning with a broken configuration",
        "private const val TOKEN = \"([a-zA-Z0-9-!#$%&'*+.^_`{|}~]+)\"",
        "// If the token is 'single-quoted' it's invalid! But we're lenient.",
        "String clientSecret = \"00000000000000000000000000000000\";",
        "\"xoxp-XXXXXXXXXX-XXXXXXXXXX-XXXXXXXXXXX-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\",",
    ],
    "ci and prose": [
        "      id-token: write # to verify the deployment", "    secrets: inherit",
        " * FITNESS.  IN NO EVENT SHALL SECRET LABS AB OR THE AUTHOR BE LIABLE FOR",
        "// plaintext password is through the credential helper", "// password is mandatory when storing",
        "Return the password for the entry\n\n=item C<account()>",
        "// Pass 'finish' event to clone for Stream-based input",
        "pass `-Zpublic-dependency` to enable support for it",
        "  adminSecretNamespace: \"kube-system\"",
        "->line(Lang::get('This password reset link will expire in :count minutes.'))",
    ],
}


@pytest.mark.parametrize(("lang", "line"), [(k, v) for k, vs in CODE_SHAPES.items() for v in vs])
def test_code_shapes_of_other_languages_are_left_alone(lang: str, line: str) -> None:
    assert redact_text(line) == line
