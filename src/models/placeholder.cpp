// placeholder so the component library is never empty
