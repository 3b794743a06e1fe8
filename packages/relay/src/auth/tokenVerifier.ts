/**
 * Verifies relay tokens (JWTs, `jose`): HS256 with a shared secret, or RS256 / ES256 / EdDSA
 * with a public key in PEM; with several keys while one replaces another.
 */
import { createPublicKey, type KeyObject } from 'node:crypto'
import { jwtVerify } from 'jose'
import { Refusal } from '../protocol/refusal.ts'
import { type AccessGrant, readGrant } from './accessGrant.ts'

/**
 * How tokens are verified: a shared secret (HS256, at least 32 bytes), or public keys (PEM text
 * of one or more RSA, P-256 or Ed25519 public keys, one block after another). A token signed
 * with any of them is accepted: during a key change the relays hold the new key and the old one
 * (`previousSecrets`, or both public keys in the PEM text) while issuers switch, then the old
 * one is dropped.
 *
 * @example
 * const key: TokenKey = { secret: new TextEncoder().encode(process.env.TIDEMARK_AUTH_SECRET) }
 * const other: TokenKey = { publicKeyPem: readFileSync('relay-public.pem', 'utf8') }
 * const changing: TokenKey = { secret: newSecret, previousSecrets: [oldSecret] }
 */
export type TokenKey =
  | { readonly secret: Uint8Array; readonly previousSecrets?: readonly Uint8Array[] }
  | { readonly publicKeyPem: string }

/**
 * Shortest HS256 secret accepted, in bytes.
 *
 * @example
 * new TextEncoder().encode(process.env.TIDEMARK_AUTH_SECRET ?? '').byteLength >= MIN_SECRET_BYTES // 32
 */
export const MIN_SECRET_BYTES = 32

const MAX_TOKEN_LENGTH = 16_384

/**
 * How far a token's `nbf` may be ahead of the relay's clock, in seconds: an issuer whose clock
 * runs a little ahead signs tokens valid from its own now, and a client refused for that would
 * not ask again. `exp` gets no such allowance.
 */
const NOT_BEFORE_SKEW_SECONDS = 60

/** Most keys one verifier holds: a token is tried against each, so a long list costs every refusal. */
const MAX_KEYS = 8

/** One key a token may be signed with, and the algorithm it takes. */
interface VerifyingKey {
  readonly key: Uint8Array | KeyObject
  readonly algorithms: string[]
}

/**
 * Checks tokens against one key, or a few while one replaces another.
 *
 * @example
 * const verifier = new TokenVerifier({ secret })
 * const grant = await verifier.verify(token)
 * if (grant instanceof Refusal) console.log(grant.text) // e.g. 'token-expired'
 */
export class TokenVerifier {
  readonly #keys: readonly VerifyingKey[]

  readonly #now: () => number

  /** Throws a TypeError or RangeError naming what is wrong with a key. `now` is the clock `exp` is read against. */
  constructor(key: TokenKey, now: () => number = Date.now) {
    this.#now = now
    this.#keys = 'secret' in key ? secretKeys(key.secret, key.previousSecrets ?? []) : publicKeys(key.publicKeyPem)
  }

  /** The token's grant, or why it is refused (`no-token`, `bad-signature`, `token-expired`, `bad-token`, `bad-claims`). */
  async verify(token: string): Promise<AccessGrant | Refusal> {
    if (token.length === 0) return new Refusal('no-token')
    if (token.length > MAX_TOKEN_LENGTH) return new Refusal('bad-token', `longer than ${MAX_TOKEN_LENGTH} characters`)
    let refusal = new Refusal('bad-signature')
    const now = this.#now()
    for (const { key, algorithms } of this.#keys) {
      let payload: Record<string, unknown>
      try {
        // jose applies one tolerance to `nbf` and `exp` alike: `exp` is read again below without it.
        payload = (await jwtVerify(token, key, { algorithms, requiredClaims: ['exp'], currentDate: new Date(now), clockTolerance: NOT_BEFORE_SKEW_SECONDS })).payload
      } catch (error) {
        refusal = refusalOf(error)
        // Signed with another key (or for another algorithm): the next key may be the one.
        if (refusal.kind === 'bad-signature') continue
        // Anything else is the token's own fault, whichever key it was signed with.
        return refusal
      }
      // As jose reads it, in whole seconds: expired from the second `exp` names.
      if (typeof payload.exp === 'number' && payload.exp <= Math.floor(now / 1000)) return new Refusal('token-expired')
      const grant = readGrant(payload)
      return typeof grant === 'string' ? new Refusal('bad-claims', grant) : grant
    }
    return refusal
  }
}

function secretKeys(secret: Uint8Array, previous: readonly Uint8Array[]): VerifyingKey[] {
  if (!Array.isArray(previous)) throw new TypeError('previousSecrets must be an array of secrets')
  const secrets = [secret, ...previous]
  if (secrets.length > MAX_KEYS) throw new RangeError(`at most ${MAX_KEYS} secrets, got ${secrets.length}`)
  secrets.forEach((each, i) => {
    if (!(each instanceof Uint8Array) || each.byteLength < MIN_SECRET_BYTES) {
      const which = i === 0 ? 'the HS256 secret' : `previous secret ${i}`
      throw new RangeError(`${which} must be at least ${MIN_SECRET_BYTES} bytes`)
    }
  })
  return secrets.map((each) => ({ key: each, algorithms: ['HS256'] }))
}

function publicKeys(pem: string): VerifyingKey[] {
  if (typeof pem !== 'string') throw new TypeError('the public key must be PEM text')
  // Node derives a public key from a private one: refuse it rather than hold the key that
  // signs every token on the relay.
  if (/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(pem)) {
    throw new TypeError('this PEM is a private key; give the relay the public key alone (openssl pkey -in private.pem -pubout -out public.pem)')
  }
  const blocks = pem.match(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g) ?? [pem]
  if (blocks.length > MAX_KEYS) throw new RangeError(`at most ${MAX_KEYS} public keys, got ${blocks.length}`)
  return blocks.map((block, i) => {
    const which = blocks.length > 1 ? `public key ${i + 1} of ${blocks.length}` : 'the public key'
    let publicKey: KeyObject
    try {
      publicKey = createPublicKey(block)
    } catch (error) {
      throw new TypeError(`${which} is not a PEM public key: ${error instanceof Error ? error.message : String(error)}`)
    }
    return { key: publicKey, algorithms: [algorithmOf(publicKey, which)] }
  })
}

function algorithmOf(key: KeyObject, which: string): string {
  const type = key.asymmetricKeyType
  if (type === 'rsa') {
    // jose verifies no RS256 signature of a smaller key: every token would be refused.
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0
    if (bits < 2048) throw new TypeError(`${which} is an RSA key of ${bits} bits; RS256 needs at least 2048`)
    return 'RS256'
  }
  if (type === 'ed25519') return 'EdDSA'
  if (type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256'
  throw new TypeError(`${which} must be RSA (RS256), P-256 (ES256) or Ed25519 (EdDSA), got ${type ?? 'unknown'} ${key.asymmetricKeyDetails?.namedCurve ?? ''}`.trim())
}

function refusalOf(error: unknown): Refusal {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
  if (code === 'ERR_JWT_EXPIRED') return new Refusal('token-expired')
  if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || code === 'ERR_JOSE_ALG_NOT_ALLOWED') return new Refusal('bad-signature')
  const message = error instanceof Error ? error.message : String(error)
  return new Refusal('bad-token', message)
}
