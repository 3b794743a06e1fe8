/**
 * Changing the key tokens are signed with, without a moment where the relays refuse what an
 * issuer signs: a relay holds the new key and the old one (a second secret, or several public
 * keys in its PEM file) while issuers switch, then only the new one.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import { afterAll, describe, expect, it } from 'vitest'
import { Refusal, relayOptionsFromEnv, TokenVerifier } from '../src/index.ts'

const NOW = 1_767_225_600_000
const CLAIMS = { sub: 'd07', role: 'device', rooms: ['fleet-a/d07'], replicas: ['d07'], sources: ['d07-temp'] }
const OLD_SECRET = new TextEncoder().encode('the-old-secret-of-at-least-32-bytes-0001')
const NEW_SECRET = new TextEncoder().encode('the-new-secret-of-at-least-32-bytes-0002')

function sign(alg: string, key: KeyObject | Uint8Array, expiresAt = NOW / 1000 + 600): Promise<string> {
  return new SignJWT(CLAIMS).setProtectedHeader({ alg }).setExpirationTime(expiresAt).sign(key)
}

/** What a verifier says of a token: the grant's subject, or the refusal's kind. */
async function verdict(verifier: TokenVerifier, token: Promise<string>): Promise<string> {
  const grant = await verifier.verify(await token)
  return grant instanceof Refusal ? grant.kind : `granted ${grant.subject}`
}

function pem(key: KeyObject): string {
  return key.export({ type: 'spki', format: 'pem' }) as string
}

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('a relay holding the new key and the old one', () => {
  it('accepts HS256 tokens of the secret and of a previous one, refuses any other, and reports an expired one as expired', async () => {
    const both = new TokenVerifier({ secret: NEW_SECRET, previousSecrets: [OLD_SECRET] }, () => NOW)
    const other = new TextEncoder().encode('somebody-elses-secret-of-32-bytes-or-more')
    expect(await verdict(both, sign('HS256', NEW_SECRET))).toBe('granted d07')
    expect(await verdict(both, sign('HS256', OLD_SECRET))).toBe('granted d07')
    expect(await verdict(both, sign('HS256', other))).toBe('bad-signature')
    // Signed with the old secret and past its exp: expired, not a bad signature, so a client asks for a new token.
    expect(await verdict(both, sign('HS256', OLD_SECRET, NOW / 1000 - 1))).toBe('token-expired')
    // Once the old secret is dropped, its tokens are refused.
    const newOnly = new TokenVerifier({ secret: NEW_SECRET }, () => NOW)
    expect(await verdict(newOnly, sign('HS256', OLD_SECRET))).toBe('bad-signature')
  })

  it('accepts tokens of every public key in its PEM text, whatever their algorithms, and no HS256 token made with one of them', async () => {
    const oldPair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const newPair = generateKeyPairSync('ed25519')
    const stranger = generateKeyPairSync('ed25519')
    const both = new TokenVerifier({ publicKeyPem: pem(newPair.publicKey) + pem(oldPair.publicKey) }, () => NOW)
    expect(await verdict(both, sign('EdDSA', newPair.privateKey))).toBe('granted d07')
    expect(await verdict(both, sign('ES256', oldPair.privateKey))).toBe('granted d07')
    expect(await verdict(both, sign('EdDSA', stranger.privateKey))).toBe('bad-signature')
    expect(await verdict(both, sign('ES256', oldPair.privateKey, NOW / 1000 - 1))).toBe('token-expired')
    // The public key's bytes used as an HMAC secret: refused for every key.
    expect(await verdict(both, sign('HS256', new TextEncoder().encode(pem(oldPair.publicKey))))).toBe('bad-signature')
    expect(await verdict(both, Promise.resolve('not.a.token'))).toBe('bad-token')
  })

  it('names the key that cannot be used (another curve, an RSA key too short), and refuses a private key anywhere in the PEM text', () => {
    const good = pem(generateKeyPairSync('ed25519').publicKey)
    const dsa = pem(generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).publicKey)
    expect(() => new TokenVerifier({ publicKeyPem: good + dsa })).toThrow(/^public key 2 of 2 must be RSA \(RS256\), P-256 \(ES256\) or Ed25519 \(EdDSA\), got ec secp256k1$/)
    // jose verifies no RS256 signature of an RSA key under 2048 bits: it would have been taken, and every token refused.
    const weak = pem(generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey)
    expect(() => new TokenVerifier({ publicKeyPem: weak + good })).toThrow(/^public key 1 of 2 is an RSA key of 1024 bits; RS256 needs at least 2048$/)
    const privateKey = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
    expect(() => new TokenVerifier({ publicKeyPem: good + privateKey })).toThrow(/this PEM is a private key/)
    expect(() => new TokenVerifier({ secret: NEW_SECRET, previousSecrets: [new Uint8Array(8)] })).toThrow(/^previous secret 1 must be at least 32 bytes$/)
  })

  it('reads them from the environment: TIDEMARK_AUTH_PREVIOUS_SECRET beside the secret, several keys in the public key file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-keys-'))
    dirs.push(dir)
    const base = { TIDEMARK_DATA_DIR: join(dir, 'data') }
    const fromSecrets = relayOptionsFromEnv({ ...base, TIDEMARK_AUTH_SECRET: new TextDecoder().decode(NEW_SECRET), TIDEMARK_AUTH_PREVIOUS_SECRET: new TextDecoder().decode(OLD_SECRET) })
    expect(await verdict(new TokenVerifier(fromSecrets.auth, () => NOW), sign('HS256', OLD_SECRET))).toBe('granted d07')
    expect(() => relayOptionsFromEnv({ ...base, TIDEMARK_AUTH_PREVIOUS_SECRET: new TextDecoder().decode(OLD_SECRET), TIDEMARK_DEV_TOKENS: '1' })).toThrow(
      'TIDEMARK_AUTH_PREVIOUS_SECRET: is accepted beside TIDEMARK_AUTH_SECRET only (a public key file may hold several keys instead)',
    )
    expect(() => relayOptionsFromEnv({ ...base, TIDEMARK_AUTH_SECRET: new TextDecoder().decode(NEW_SECRET), TIDEMARK_AUTH_PREVIOUS_SECRET: 'short' })).toThrow(
      'TIDEMARK_AUTH_PREVIOUS_SECRET: must be at least 32 bytes, got 5',
    )
    const oldPair = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const newPair = generateKeyPairSync('ed25519')
    const keyFile = join(dir, 'relay-public.pem')
    writeFileSync(keyFile, pem(newPair.publicKey) + pem(oldPair.publicKey))
    const fromFile = relayOptionsFromEnv({ ...base, TIDEMARK_AUTH_PUBLIC_KEY: keyFile })
    const verifier = new TokenVerifier(fromFile.auth, () => NOW)
    expect(await verdict(verifier, sign('RS256', oldPair.privateKey))).toBe('granted d07')
    expect(await verdict(verifier, sign('EdDSA', newPair.privateKey))).toBe('granted d07')
  })
})
