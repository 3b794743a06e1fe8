// @ts-check
/**
 * A TypeDoc plugin for the house rule "every public function and class has TSDoc with an
 * `@example`": each exported function or class of the documented packages without one is a
 * warning, and `treatWarningsAsErrors` makes the API build fail on it.
 */
import { Application, DeclarationReflection, ReflectionKind } from 'typedoc'

const KINDS = [ReflectionKind.Function, ReflectionKind.Class]

/** @param {import('typedoc').Comment | undefined} comment */
function hasExample(comment) {
  return comment?.blockTags.some((tag) => tag.tag === '@example') ?? false
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.on(Application.EVENT_VALIDATE_PROJECT, (project) => {
    for (const kind of KINDS) {
      for (const reflection of project.getReflectionsByKind(kind)) {
        if (!(reflection instanceof DeclarationReflection)) continue
        const declaration = reflection
        const documented =
          hasExample(declaration.comment) || (declaration.signatures ?? []).some((signature) => hasExample(signature.comment))
        if (!documented) {
          app.logger.warn(`${declaration.getFriendlyFullName()} (${ReflectionKind.singularString(kind)}) has no @example`)
        }
      }
    }
  })
}
