import type { FrameLocator, Page } from 'playwright-core';
import { expect } from 'vitest';

/** The element is inside the window and inside the side bar: nothing to scroll or widen first. */
export async function expectInSideBar(page: Page, panel: FrameLocator, selector: string): Promise<void> {
  const sidebar = await page.locator('.part.sidebar').boundingBox();
  const box = await panel.locator(selector).boundingBox();
  expect(sidebar && box, selector).toBeTruthy();
  const height = page.viewportSize()?.height ?? 900;
  expect(box!.x, `${selector} left`).toBeGreaterThanOrEqual(sidebar!.x);
  expect(box!.x + box!.width, `${selector} right`).toBeLessThanOrEqual(sidebar!.x + sidebar!.width + 0.5);
  expect(box!.y + box!.height, `${selector} bottom`).toBeLessThanOrEqual(Math.min(height, sidebar!.y + sidebar!.height) + 0.5);
}
